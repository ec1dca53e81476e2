"""The use cases: each a function returning one object that is both a rich renderable
(``__rich_console__``) and a JSON-able value (``.to_json()``); the CLI only parses arguments
and prints one of the two.

    overview.py         show_trace      -> TraceOverview (TraceSummary, PassTable)
    context_table.py    ContextTable: the pass contexts of a trace of a whole process
    suite_table.py      show_suite      -> SuiteOverview: a folder of per-test traces
    trace_report.py     report_trace    -> TraceReport
    diff_tree.py        DiffView, OpDeltaTable: one diff as a tree of hunks, op-count deltas
    comparison.py       compare_files / compare_pass / compare_traces -> FileComparison, TraceComparison
    alignment_table.py  AlignmentTable, DivergenceView (over analysis.alignment)
    history_tree.py     HistoryTree (over analysis.provenance)
    kernel_history.py   kernel_history  -> KernelHistory (relayviz kernel)
    loop_nest.py        LoopNestView, nest_lines: a kernel's loop nest as indented lines
    kernel_changes.py   kernel_change_text: a kernel change as one line of a report
    graph_report.py     inspect_graph   -> GraphReport
    file_check.py       check_file      -> FileCheck
    pass_replay.py      replay_event    -> ReplayResult
    bisection.py        bisect_command  -> BisectResult
"""
