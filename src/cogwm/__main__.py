"""``python -m cogwm``: the command line, as ``accelerate launch -m cogwm train ...`` runs it."""

from cogwm.cli.main import main

if __name__ == "__main__":
    main()
