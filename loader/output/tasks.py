"""Task names for live samples: what the tracking event's COMM and FORK records say, in time
order, and ``/proc`` for a task no record named (one that existed before the recording)."""

from __future__ import annotations

from pathlib import Path

from evspec.loader.output.samples import TaskEvent


class TaskNames:
    """The name of each task (thread id) as of the records applied so far."""

    def __init__(self) -> None:
        self.comms: dict[int, str] = {}

    def apply(self, event: TaskEvent) -> None:
        if event.comm is not None:
            self.comms[event.tid] = event.comm
        elif event.parent is not None and event.parent in self.comms:
            self.comms[event.tid] = self.comms[event.parent]  # a child is named after its parent until it execs

    def name(self, pid: int, tid: int) -> str:
        """``tid``'s name: from the records, else its process's, else ``/proc``; a task gone
        before it was named is ``:TID``, as perf names an unknown task."""
        comm = self.comms.get(tid) or self.comms.get(pid)
        if comm is None:
            try:
                comm = Path(f"/proc/{tid}/comm").read_text().rstrip("\n")
            except OSError:
                comm = f":{tid}"
        self.comms[tid] = comm
        return comm

    def names(self, pids: list[int], tids: list[int]) -> list[str]:
        """``name`` of every (pid, tid), looked up once per task."""
        comms = self.comms
        if not tids:
            return []
        if tids.count(tids[0]) == len(tids):
            return [comms.get(tids[0]) or self.name(pids[0], tids[0])] * len(tids)
        for pid, tid in dict.fromkeys(zip(pids, tids, strict=True)):
            if tid not in comms:
                self.name(pid, tid)
        return list(map(comms.__getitem__, tids))
