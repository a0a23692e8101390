"""The Textual TUI (the only package that imports Textual).

    app.py          KdebugApp: routes events to the widgets, actions, command palette; run_tui, run_replay
    job_tree.py     the job tree, ↻ back-references        detail.py      Source/IR/Finish/PTX/asm/Events/Strategy
    launches.py     the launches table                      diagnostics.py every alert, in order
    output.py       the script's stdout and stderr          breakpoints.py the breakpoints dialog
    key_help.py     the footer                              messages.py    app-wide messages
    textview.py     a ScrollView that renders only visible lines of a document
    documents.py    code, diff and listing documents (no Textual)
    teaching.py     explanations of phases, finish passes, strategies (no Textual)
    synthetic.py    synthetic traces for tests and benchmarks/bench_tui.py (no Textual)
"""
