"""
Command lines run as processes forked from one interpreter that has imported their code.

A command given a bad input ends before it does any work, so nearly all of a fresh process's
seconds go to starting Python and importing the package (SciPy, Numba, rclpy), the same for
every input. `Forker` starts one server interpreter; for each command line it imports the
command's modules once (in the server), then forks a child that sets ``sys.argv`` and runs
the same function as the console script (``sys.exit(main())``) or ``python -m``: a process of
its own, with its own stdout, stderr and exit status, and the interpreter's ending: the
status of ``sys.exit``, a traceback and status 1 for an uncaught exception.
"""

import json
from importlib.metadata import entry_points
import os
from pathlib import Path
import subprocess
import sys


def serve():
    """Server loop: read one JSON request a line, fork its child, answer its exit status."""
    from importlib import import_module
    import signal
    from continuum_ctrl.models import MODEL_TYPES
    for module, _ in MODEL_TYPES.values():     # which load_model imports when it needs them
        import_module(module)
    for line in sys.stdin:
        target, modules, argv, out, err, cwd, timeout = json.loads(line)
        for name in modules:
            import_module(name)
        module, function = target.split(':')
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:            # the child: never returns to the loop
            written = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, out, written),
                                    (2, err, written)):
                os.dup2(os.open(path, flags), fd)
            signal.alarm(timeout)       # then SIGALRM ends the child
            os.chdir(cwd)
            sys.argv = argv
            run_child(getattr(import_module(module), function))
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)


def run_child(main):
    """
    Run `main` and end this process with its status, as the interpreter ends a script.

    The ending skips the interpreter's teardown (``os._exit``): it would also tear down what
    the server imported, Numba and rclpy among them, which are not made to be torn down in a
    forked child.
    """
    import traceback
    try:
        status = main()
    except SystemExit as exc:
        status = exc.code
    except BaseException:
        traceback.print_exc()
        status = 1
    if status is not None and not isinstance(status, int):
        print(status, file=sys.stderr)
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status or 0)


def console_script(name):
    """Return the ``module:function`` a console script `name` runs."""
    return next(e.value for e in entry_points(group='console_scripts') if e.name == name)


class Forker:
    """One server interpreter (a context manager); `run` runs a line as `subprocess.run` would."""

    def __enter__(self):
        self.server = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True)
        return self

    def __exit__(self, *exc):
        self.server.stdin.close()
        self.server.wait(timeout=30)
        self.server.stdout.close()

    def run(self, line, folder, cwd=None, timeout=180):
        """
        Run `line` (a console script's path, or ``python -m continuum_ctrl.apps.cli``) forked.

        Returns a CompletedProcess with its exit status and text output (files in `folder`);
        the child runs in `cwd` (default: `folder`) and is ended by SIGALRM (status -14)
        after `timeout` s (whole seconds).
        """
        if line[1:3] == ['-m', 'continuum_ctrl.apps.cli']:
            from continuum_ctrl.apps import cli
            target, argv = 'continuum_ctrl.apps.cli:main', [cli.__file__] + line[3:]
            modules = ['continuum_ctrl.apps.cli', cli.COMMANDS[argv[1]][0]]
        else:
            target, argv = console_script(Path(line[0]).name), line
            modules = [target.split(':')[0]]
        out, err = Path(folder) / 'forked.stdout', Path(folder) / 'forked.stderr'
        request = [target, modules, argv, str(out), str(err), str(cwd or folder), int(timeout)]
        self.server.stdin.write(json.dumps(request) + '\n')
        self.server.stdin.flush()
        answer = self.server.stdout.readline()
        assert answer, 'the fork server exited'
        return subprocess.CompletedProcess(line, int(answer), out.read_text(), err.read_text())


if __name__ == '__main__':
    serve()
    os._exit(0)                 # no teardown here either: the tests wait for this exit
