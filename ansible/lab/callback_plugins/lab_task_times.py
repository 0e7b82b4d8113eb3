"""Lab-only callback: where a playbook's time goes (ansible-core has no profile_tasks without ansible.posix).

Enabled by ansible/lab/test-lab.sh (ANSIBLE_CALLBACKS_ENABLED=lab_task_times). At the end of the run it
prints the slowest tasks by wall time (first host started to last host finished) and each one's slowest
host, so a slow stage can be traced to its tasks. LAB_TASK_TIMES_TOP sets how many (25).
"""

import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: lab_task_times
type: aggregate
short_description: slowest tasks of a lab run
description: prints the slowest tasks (wall time, slowest host) at the end of a playbook run
requirements: [enabled in ANSIBLE_CALLBACKS_ENABLED]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "lab_task_times"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._tasks = {}  # uuid -> [name, first start, last end, {host: seconds}]
        self._start = {}  # (uuid, host) -> start
        self._t0 = time.monotonic()

    def _name(self, task):
        path = task.get_path() or ""
        path = path.split("/ansible_collections/")[-1].split("/ansible/")[-1]  # collection- or playbook-relative
        return f"{path} {task.get_name()}".strip()

    @staticmethod
    def _role(task):
        role = getattr(task, "_role", None)
        return role.get_name() if role else "(playbook)"

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._tasks.setdefault(task._uuid, [self._name(task), time.monotonic(), time.monotonic(), {}, self._role(task)])

    v2_playbook_on_handler_task_start = v2_playbook_on_task_start

    def v2_runner_on_start(self, host, task):
        self._start[(task._uuid, host.get_name())] = time.monotonic()

    def _done(self, result, **_kwargs):  # v2_runner_on_failed also passes ignore_errors
        now = time.monotonic()
        task, host = result._task, result._host.get_name()
        entry = self._tasks.setdefault(task._uuid, [self._name(task), now, now, {}, self._role(task)])
        entry[2] = max(entry[2], now)
        started = self._start.pop((task._uuid, host), now)
        entry[3][host] = entry[3].get(host, 0.0) + now - started

    v2_runner_on_ok = v2_runner_on_failed = v2_runner_on_skipped = v2_runner_on_unreachable = _done

    def v2_playbook_on_stats(self, stats):
        top = int(os.environ.get("LAB_TASK_TIMES_TOP", "25"))
        rows = sorted(self._tasks.values(), key=lambda e: e[2] - e[1], reverse=True)[:top]
        self._display.display(f"LAB TASK TIMES (slowest {top} of {len(self._tasks)}; run {time.monotonic() - self._t0:.0f} s)")
        for name, first, last, hosts, _ in rows:
            slow = max(hosts.items(), key=lambda kv: kv[1]) if hosts else ("-", 0.0)
            self._display.display(f"  {last - first:7.1f} s  {name}  (slowest {slow[0]} {slow[1]:.1f} s)")
        roles = {}
        for _, first, last, _, role in self._tasks.values():
            count, seconds = roles.get(role, (0, 0.0))
            roles[role] = (count + 1, seconds + last - first)
        self._display.display("LAB TASK TIMES by role (tasks, wall seconds)")
        for role, (count, seconds) in sorted(roles.items(), key=lambda kv: kv[1][1], reverse=True):
            self._display.display(f"  {seconds:7.1f} s  {count:4d} tasks  {role}")
