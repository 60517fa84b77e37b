"""How a run is judged and measured: the verdict's criterion and the accuracy figures
(accuracy, compare), data sets (dataset), where accuracy is lost (numerics), where the time
goes (profile), and the pictures of it (png)."""
