"""The sanitizers' names, in their order, and the set a run has by default: for the run options and the command
line, which never run a kernel in their own process (kdebug/runtime/sanitizers.py, the checks, imports numpy)."""
SANITIZERS = ("memcheck", "synccheck", "racecheck", "initcheck")
DEFAULT = frozenset({"memcheck", "synccheck"})
