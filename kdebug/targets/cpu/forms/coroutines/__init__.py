"""The coroutine form: one LLVM coroutine per thread, switched at each barrier (``lowering.py``), run by the block
scheduler (``scheduler.py``); loops all threads run at once (``lockstep.py``, decided by ``lockstep_rules.py``);
which exited threads skipped a barrier (``barrier_lines.py``). Every kernel can take it: the region form's
fallback (kdebug/targets/cpu/forms/__init__.py)."""
