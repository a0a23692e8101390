"""A deferred-codegen strategy of your own: a worklist over one shared job table, written only against
the documented interface (docs/internals/strategies.md). Try it:

    kdebug --headless --strategy docs/examples/my_worklist.py:MyWorklist sample_kernels/recursive_launch.py
    kdebug check-strategy docs/examples/my_worklist.py:MyWorklist
"""
from kdebug.driver.strategies import Strategy
from kdebug.errors import ReentrantLoopError


class MyWorklist(Strategy):
    name = "my-worklist"
    summary = "a worklist over one job table, written against the documented interface"
    description = ("my-worklist: one job table for the compilation and a worklist over it. A key is compiled "
                   "once; a request that closes a cycle resolves to a reference; every nested job expands its "
                   "own markers through the table; every job reaches the finish list.")
    # the invariants it claims (all of kdebug/driver/invariants.py's NAMES, the default): check-strategy holds it
    # to them
    invariants = ("compiled-once", "finish-once", "no-markers", "answered", "primal-resolved", "verifies")

    def __init__(self):
        self.comp, self.modules = None, {}  # the compilation's job id -> its module (markers resolved)

    def compiled(self, comp):
        """This compilation's compiled modules (one object serves every compilation of the session)."""
        if self.comp is not comp:
            self.comp, self.modules = comp, {}
        return self.modules

    def request(self, cx, comp, requester, job, reason, loc, needs="address"):
        path = cx.request_path(job.key, requester.key)  # does the job asked for lead back to the requester?
        if path is not None and needs == "body":
            # a derivative needs the body of a job still being compiled on its own path: stop, located
            cycle = [cx.record_for_key(k).id for k in path] + [cx.record_for_key(job.key).id]
            cx.reentrant(requester, cycle, "stopped", loc)
            raise ReentrantLoopError(f"{requester.name} needs the body of {job} while it is being compiled", loc,
                                     "differentiate a function that does not take its own derivative")
        cx.add_request(requester.key, job.key)
        rec = comp.table.get(job.key) or cx.compiled_before(job.key)
        if rec is None:  # new: a record in the table, compiled when the worklist reaches it
            rec = cx.new_record(job, requester.id, reason, loc)
            comp.table[job.key] = rec
            comp.queue.append(rec)
        if path is not None:  # a cycle: the marker becomes a reference to the entry
            cx.reentrant(requester, [cx.record_for_key(k).id for k in path] + [rec.id], "reference", loc)
        return rec

    def expand(self, cx, comp, irmod):
        mod = cx.parse_expanded(irmod, comp.top)
        comp.finish_list.append(comp.top)
        while comp.queue:
            job = comp.queue.popleft()
            modules = self.compile(cx, comp, job)
            keep = job.kind == "derivative"  # a derivative of it may still need its body
            mod.link_in(modules[job.id], preserve=keep)
            if not keep:
                del modules[job.id]
            comp.finish_list.append(job)  # every job, nested or not, reaches the finish passes
        return mod

    def compile(self, cx, comp, job):
        """A nested job compiled once, its own markers resolved through the same table."""
        modules = self.compiled(comp)
        if job.id not in modules:
            cx.start(job)
            lowered = cx.front(job)
            modules[job.id] = cx.run_phase(job, "expand_deferred", lambda: cx.parse_expanded(lowered, job))
        return modules

    def resolve_primal(self, cx, comp, job, text):
        view = cx.parse_expanded(text, job)
        for jid in comp.requests.get(job.id, []):  # a derivative the primal takes: compiled first, linked in
            dep = cx.record(jid)
            if dep.kind == "derivative" and job.job.function.primal == dep.job.function:
                view.link_in(self.compile(cx, comp, dep)[dep.id], preserve=True)
        return str(view)
