"""The ``cogwm`` command line. Nothing else in the package imports from here."""
