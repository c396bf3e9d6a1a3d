"""The command-line parser of the bench scripts: a bad argument is one line and exit code 2."""
import argparse


class OneLineParser(argparse.ArgumentParser):
    """A bad argument is one line ("PROG: what is wrong (see --help)") and exit code 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see --help)\n")
