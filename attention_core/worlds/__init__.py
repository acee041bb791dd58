"""Toy tasks: the small, generated data the chapters run attention on, with their models'
training and their metrics.

* ``cues``: a desk of objects, saliency and goals (chapter 1);
* ``regression``: noisy samples of a smooth function, and the learned bandwidth (chapter 2);
* ``retrieval``: a noisy lookup, for soft against hard attention (chapter 3);
* ``corpus``, ``vocab``, ``translation``, ``metrics``: a generated English-Chinese corpus that
  knows its alignments, its vocabularies and batches, the training of a translation model and
  its use, and the measures of its translations (chapters 4 and 8);
* ``complexity``: dependency paths and operation counts of layers (chapters 3, 5 and 9);
* ``twins``: find the other position with the same symbol, one trained self-attention layer
  (chapter 5);
* ``fetch``: fetch items named by different attributes, which one head cannot do
  (chapter 7);
* ``shapes``: pictures of two coloured shapes with captions, where the objects are and which
  is left of the other (chapter 10);

and the machinery they share: ``training`` (``fit``, the one training loop, and the schedules
of its rate), ``side_by_side`` (independent trainings in worker threads, one CPU thread each)
and ``pretrained`` (the recipes of the models the book ships, and their weights).

Nothing is downloaded: all data are generated from a seed.
"""
