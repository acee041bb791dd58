"""Small helpers that the worked solutions (solutions/NN_*.ipynb) use, one module per chapter."""
