"""What runs the course, apart from the library that mirrors PyTorch.

``exercise`` (the ``@exercise`` marker and the choice of references) is the one
module the library imports from here; everything else (the grader and its pytest
plugin, the lab and dashboard launchers, notebook execution, benchmarks, the
notebooks' side-by-side checks) imports the library, never the other way round.
"""
