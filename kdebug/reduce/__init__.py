"""``kdebug reduce``: shrink a script, on its syntax tree, to the few lines that still show a property
of its run (a re-entrant cycle, a finish-coverage miss, a sanitizer's finding...), judged from the
events of each trial's debuggee child."""
