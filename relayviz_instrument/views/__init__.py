"""The use cases: each a function returning one object that is both a rich renderable
(``__rich_console__``) and a JSON-able value (``.to_json()``); the CLI only parses arguments
and prints one of the two. A use case's module is named after its command; the renderables
several commands share are named for what they draw.

    show.py        show_trace      -> TraceOverview (TraceSummary, PassTable)      relayviz show
    suite.py       show_suite      -> SuiteOverview: a folder of per-test traces   relayviz show
    contexts.py    ContextTable: the pass contexts of a trace of a whole process
    report.py      report_trace    -> TraceReport                                  relayviz report
    diff.py        compare_files / compare_pass / compare_traces -> FileComparison,
                   TraceComparison; AlignmentTable, DivergenceView                 relayviz diff
    history.py     HistoryTree (over analysis.provenance)                          relayviz history
    kernel.py      kernel_history  -> KernelHistory                                relayviz kernel
    inspect.py     inspect_graph   -> GraphReport                                  relayviz inspect
    validate.py    check_file      -> FileCheck                                    relayviz validate
    replay.py      replay_event    -> ReplayResult                                 relayviz replay
    bisect.py      bisect_command  -> BisectResult                                 relayviz bisect
    doctor.py      check_installation -> InstallationCheck                         relayviz doctor
    hunk_tree.py   DiffView, OpDeltaTable: one diff as a tree of hunks, op-count deltas
    kernel_text.py LoopNestView, nest_lines, kernel_change_text: kernels as lines of text

Each takes what ``analysis`` computed (a trace's :class:`~relayviz_instrument.analysis.reading.TraceReading`
above all) and computes nothing of its own.
"""
