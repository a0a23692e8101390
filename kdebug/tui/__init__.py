"""The Textual TUI (the only package that imports Textual).

    app.py          KdebugApp, a shell: lays out the widgets, routes events and messages, runs the debuggee
    key_help.py     the key table: bindings, footer, help screen, palette   tabs.py   the detail pane's tabs
    job_tree.py     the job tree, ↻ back-references        detail.py      Source/IR/Finish/PTX/asm/Events/Strategy
    bottom.py       launches, diagnostics, output tabs      search.py      the search box
    launches.py     the launches table                      diagnostics.py every alert, in order
    output.py       the script's stdout and stderr          breakpoints.py the breakpoints dialog
    status.py       the status line and the header          messages.py    app-wide messages
    inbox.py        what the debuggee's reader threads hand over
    descend.py      site marks, the descend path            travel.py      time travel in a replay
    textview.py     a ScrollView that renders only visible lines of a document
    documents.py    code, diff and listing documents (no Textual)
    teaching.py     explanations of phases, finish passes, strategies (no Textual)
    synthetic.py    synthetic traces for tests and benchmarks/bench_tui.py (no Textual)
"""
