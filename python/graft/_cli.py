"""The `graft` command of a pip-installed graft: runs the command-line binary installed inside the
package (graft/bin/graft), passing the arguments and the exit status through."""
import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "graft")
    if not os.access(exe, os.X_OK):
        sys.stderr.write(f"graft: error: the command-line binary is not installed at {exe}; "
                         "reinstall with `pip install .` from a graft checkout\n")
        return 1
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
