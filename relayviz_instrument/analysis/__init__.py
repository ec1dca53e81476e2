"""Trace-level analysis: what a trace's pass events mean, derived from its records and
snapshots. Pure: no rich, no output (the views render what is computed here).

    pipeline.py    event roles (pipeline / finishing / scratch), changes outside any pass,
                   who did the work (credits), per-pass operator deltas
    steps.py       what changed a module between passes (a build step, TVM, the user's code)
    pass_diffs.py  every diff of one trace computed once, summaries cached by DIFF_VERSION
    provenance.py  each node's history across the pipeline's passes
    loop_nest.py   a PrimFunc's loop nest: loops, thread bindings, blocks, allocations, barriers
    schedule_changes.py  what a pass did to each kernel's loop nest, in a schedule's words
    kernel_story.py      one kernel from the pass that made it to its device kernel
    alignment.py   two traces' pass events paired, outputs compared, divergences
    selection.py   the pass event a ``--pass`` names
"""
