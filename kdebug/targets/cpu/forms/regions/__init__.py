"""The region form: a kernel cut at its barriers, each region a loop over the block's threads (``cut.py``; its
launcher body ``scheduler.py``; the threads each region can change anything for, ``bounds.py``). When it is
chosen: kdebug/targets/cpu/forms/__init__.py."""
