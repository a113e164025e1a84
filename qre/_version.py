"""The version of the qre-monitor distribution (``qre.__version__``, ``qre --version``)."""

__version__ = "0.2.0"
