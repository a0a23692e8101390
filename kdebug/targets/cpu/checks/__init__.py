"""The checks compiled into a CPU kernel: memcheck's bounds checks (``memcheck.py``, on by default) and
racecheck and initcheck's shadow memory (``sanitizers.py``, ``--sanitize``). Their reports are built by the
runtime (kdebug/runtime/memcheck.py, kdebug/runtime/sanitizers.py) from what these write in the record."""
