"""Toy worlds: the small, generated tasks the chapters run attention on.

One module per world, holding its data, its training loop and its metric:

* ``cues``: a desk of objects, saliency and goals (chapter 1);
* ``regression``: noisy samples of a smooth function, and the learned bandwidth (chapter 2);
* ``retrieval``: a noisy lookup, for soft against hard attention (chapter 3);
* ``translation``: a generated English-Chinese corpus that knows its alignments, with its
  vocabulary, batches, training loop and metrics (chapters 4 and 8);
* ``complexity``: dependency paths and operation counts of layers (chapters 3, 5 and 9);
* ``twins``: find the other position with the same symbol, one trained self-attention layer
  (chapter 5);
* ``fetch``: fetch two items named by two different attributes, which one head cannot do
  (chapter 7);
* ``shapes``: pictures of two coloured shapes with captions, where the objects are and which
  is left of the other (the groundwork of chapter 10);

and ``side_by_side``, which trains independent models of a world in worker threads, one CPU
thread each (chapters 7 and 10).

Nothing is downloaded: every world is generated from a seed.
"""
