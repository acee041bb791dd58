"""Build it yourself: each chapter's mechanism as an exercise that checks the reader's code.

``check(task, fn)`` runs the reader's function ``fn`` against the package's own implementation
of ``task`` (a name in ``TASKS``) on random, edge-case and adversarial inputs and returns a
``Verdict``: ``passed``, and a message in English and Chinese that names the first failing case
and, when the failure matches a common mistake of the task's catalogue, what that mistake is.
``TASKS[name]`` holds the chapter, the package function the task re-implements and its
signature, which the reader's function takes.
"""
from .checking import Case, Mistake, Task, Verdict, check, language, set_language
from .tasks import TASKS

__all__ = ["TASKS", "check", "Task", "Mistake", "Case", "Verdict", "set_language", "language"]
