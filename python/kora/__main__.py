"""`kora` on the command line when installed with pip (`python -m kora ...` too): runs the
CLI binary the wheel carries in kora/bin with the same arguments."""
import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "kora")
    if not os.path.exists(exe):
        sys.exit("kora: this package has no CLI binary (kora/bin/kora); build it with "
                 "`pip install .` or use the build tree's kora")
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    main()
