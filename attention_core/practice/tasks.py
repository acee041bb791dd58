"""Every practice task, by name, in the order of the chapters."""
from __future__ import annotations

from . import cues_to_seq2seq, long_and_images, self_attention_to_transformer

TASKS = {task.name: task for task in [*cues_to_seq2seq.TASKS,
                                       *self_attention_to_transformer.TASKS,
                                       *long_and_images.TASKS]}
