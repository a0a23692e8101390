"""How the CPU target runs a kernel's block: the three forms, and which a kernel gets.

A GPU block's threads run at once and meet at barriers; the host runs them on one thread. A kernel is
compiled in one of three forms, chosen once per kernel while it is lowered (``choice.choose_form``):

| form | when | why not (the first that applies) | measured cost (2^22 block reduction, memcheck off; docs/internals/cpu-forms.md) |
|---|---|---|---|
| ``thread loop`` (kdebug/targets/cpu/launcher.py) | the kernel has no block barrier | it has one | one loop over the block's threads, vectorised by LLVM: saxpy at 0.43x numpy's time |
| ``regions`` (``forms/regions/``: ``cut.py``, ``scheduler.py``, ``bounds.py``) | it has barriers, and none of the reasons at the right holds | the form turned off (``KDEBUG_REGIONS=0``); ``debug=True``; ``--shuffle-threads``; racecheck or initcheck; a grid barrier; a warp operation the cut cannot keep; a barrier inside a loop or branch the cut cannot split (``cut.region_reason``) | each region a loop over the threads it can change: 0.305 ns per element |
| ``coroutines`` (``forms/coroutines/``: ``lowering.py``, ``scheduler.py``, lockstep loops) | it has barriers and the region form refused it | none: every kernel can run as coroutines | one LLVM coroutine per thread, switched at each barrier: 32.7 ns per element (107x the region form) |

The reason a kernel was refused the region form is kept with its job (``JobRecord.form``) and shown in
the regions snapshot and the TUI. The checks compiled into every form (memcheck's bounds checks,
racecheck and initcheck's shadow memory) are in ``kdebug/targets/cpu/checks/``. With memcheck (on by default) a
region-form kernel's failed check ends its thread's step and the launcher reports the first failed thread after
the thread loop (``regions.fail_fresh``), so checked thread loops vectorise too; a kernel that calls a device
function or has a warp operation keeps the check that stops the launch at once, and its regions snapshot says
why (``regions.fresh_checks_reason``); benchmarks/bench_kernel_forms.py measures both on 13 common kernel forms.

What reaches the launcher: a region-form kernel's lowering records ``cut.RegionLowering`` (the cuts, their
blocks and lines, the uniform variables, the loops in rounds), the regions stage's ``cut`` adds ``cut.RegionCut``
(the region frame's layout), and finish_ir (target.py) makes of them and the module's other facts one frozen
``launcher.LauncherSpec`` (the region form's part a ``launcher.RegionLaunch``), from which the launcher is built
and under which it is cached.
"""

FORM_THREAD_LOOP = "thread loop"  # a barrier-free kernel: one loop over the block's threads
FORM_REGIONS = "regions"  # cut at its barriers, each region a loop over the block's threads
FORM_COROUTINES = "coroutines"  # one coroutine per thread, switched at each barrier
