"""A session as one self-contained, offline HTML file (``kdebug export TRACE --html OUT.html``).

Read from the session model like every other face; no Textual. ``html.py`` builds the page,
``page.css`` and ``page.js`` are inlined into it.
"""
