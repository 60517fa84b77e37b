"""Small helpers with no knowledge of models, boards or targets: files written whole, .npz
arrays, dtypes, units, progress display, ExecuTorch's exir imported lazily."""
