"""A tqdm progress bar for the Spark jobs a block of code runs (``with spark_progress(spark, "write")``).

Spark's own console progress bar draws over other output and is off in lancefmt's sessions; this
polls the driver's status tracker instead (a daemon thread, twice a second) and shows the tasks
of the jobs started inside the block: done / total, across every stage Spark has planned so far.
"""
from __future__ import annotations

import contextlib
import threading


class _Poller(threading.Thread):
    def __init__(self, spark, desc: str, interval: float):
        super().__init__(daemon=True, name="lancefmt-spark-progress")
        from tqdm import tqdm

        self.tracker = spark.sparkContext.statusTracker()
        self.known_jobs = set(self.tracker.getJobIdsForGroup(None) or [])
        self.bar = tqdm(total=0, desc=f"   {desc}", unit="task", leave=False, dynamic_ncols=True,
                        disable=None)  # None: only on a terminal
        self.interval = interval
        self.stopped = threading.Event()
        self.stages: dict = {}  # stage id -> (done, total)

    def _poll(self) -> None:
        for job_id in self.tracker.getJobIdsForGroup(None) or []:
            if job_id in self.known_jobs:
                continue
            job = self.tracker.getJobInfo(job_id)
            finished = job is not None and str(job.status) == "SUCCEEDED"
            for stage_id in (job.stageIds if job else []):
                stage = self.tracker.getStageInfo(stage_id)
                if stage is not None:
                    # a finished job's stages that never ran (skipped, re-planned) add nothing
                    total = stage.numCompletedTasks if finished else stage.numTasks
                    self.stages[stage_id] = (stage.numCompletedTasks, total)
        done = sum(d for d, _ in self.stages.values())
        total = sum(t for _, t in self.stages.values())
        if total != self.bar.total:
            self.bar.total = total
        self.bar.n = done
        self.bar.refresh()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            try:
                self._poll()
            except Exception:  # the session went away: stop drawing
                return

    def finish(self) -> None:
        self.stopped.set()
        self.join(timeout=5)
        try:
            self._poll()  # the jobs that ended between two polls count too
        except Exception:
            pass
        self.bar.close()


@contextlib.contextmanager
def spark_progress(spark, desc: str = "spark", interval: float = 0.5):
    """Show a task progress bar while the block runs Spark jobs (on a terminal; tqdm decides).
    Yields the poller: ``.stages`` maps each stage seen to (tasks done, tasks)."""
    poller = _Poller(spark, desc, interval)
    poller.start()
    try:
        yield poller
    finally:
        poller.finish()
