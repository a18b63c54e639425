// The Python runner: a module Web Worker that loads the vendored Pyodide and runs one code
// block of a response (the page makes a fresh worker for each run, so nothing a block
// changes outlives it), and tells the page (static/runner.js), on the port the page hands
// over with the block, what it printed and how it ended. Served at /runner/python-worker.js with a
// Content-Security-Policy (src/runner/mod.rs) that lets it load the Pyodide files and
// reach nothing else. The network globals are also removed once Pyodide is loaded, so a
// block that reaches for them fails plainly; the policy, not this, is what holds.

// Where the server serves Pyodide (`/runner/pyodide/<version>/`), written in by the server
// as it serves this file; null when it has no Pyodide to serve.
const PYODIDE_INDEX = /* pyodide-index */ null;

/* worker-common */
function writer(stream) {
  const decoder = new TextDecoder();
  return {
    write(bytes) {
      write(stream, decoder.decode(bytes, { stream: true }));
      return bytes.length;
    },
  };
}

// Runs one block as `python main.py` would: a fresh `__main__` namespace each time, the
// traceback of an uncaught exception without this driver's own frame, `sys.exit(n)` as
// the exit status. The source is put in linecache so the traceback shows its lines. A
// block that is an interactive session (its first line that is not blank starts with the
// `>>>` prompt, as static/runner.js also tests) is run as `python -m doctest` runs one:
// each example, its output compared with the output shown, each failure reported, and
// the exit status 1 if any failed.
const DRIVER = `
import doctest, linecache, sys, traceback

def is_session(source):
    first = next((line for line in source.splitlines() if line.strip()), "")
    stripped = first.lstrip()
    return stripped == ">>>" or stripped.startswith(">>> ")

def run_session(source):
    test = doctest.DocTestParser().get_doctest(source, {"__name__": "__main__"}, "main.py", "main.py", 0)
    runner = doctest.DocTestRunner(verbose=False)
    failed, attempted = runner.run(test, out=sys.stdout.write)
    word = "example" if attempted == 1 else "examples"
    print(f"doctest: {attempted - failed} of {attempted} {word} passed")
    return 1 if failed else 0

def run(source):
    # A previous block may have replaced them; each block starts with the real ones.
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    session = is_session(source)
    if not session:
        linecache.cache["main.py"] = (len(source), None, source.splitlines(True), "main.py")
    try:
        if session:
            return run_session(source)
        scope = {"__name__": "__main__", "__builtins__": __builtins__, "__file__": "main.py"}
        exec(compile(source, "main.py", "exec"), scope)
        return 0
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return int(stop.code or 0)
        print(stop.code, file=sys.stderr)
        return 1
    except BaseException as error:
        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
`;

async function load() {
  const { loadPyodide } = await import(`${PYODIDE_INDEX}pyodide.mjs`);
  const pyodide = await loadPyodide({
    indexURL: PYODIDE_INDEX,
    stdout: () => {},
    stderr: () => {},
  });
  pyodide.setStdout(writer("stdout"));
  pyodide.setStderr(writer("stderr"));
  // `input()` meets the end of input, as a script run with nothing piped in would.
  pyodide.setStdin({ stdin: () => null });
  const globals = pyodide.toPy({});
  pyodide.runPython(DRIVER, { globals });
  /* drop-network-globals */ dropNetworkGlobals();
  return globals.get("run");
}

self.onmessage = async (event) => {
  if (event.data?.type !== "run" || !takePort(event)) return;
  self.onmessage = null; // one block per worker: the page makes a fresh one for the next
  if (PYODIDE_INDEX === null) {
    post({ type: "unavailable" });
    return;
  }
  post({ type: "loading" });
  let runner;
  try {
    runner = await load();
  } catch (error) {
    post({ type: "broken", message: `Python could not be loaded: ${error}` });
    return;
  }
  post({ type: "ready" });
  let exitCode;
  try {
    exitCode = runner(String(event.data.code));
  } catch (error) {
    write("stderr", `${error}\n`);
    exitCode = 1;
  }
  post({ type: "done", status: exitCode === 0 ? "passed" : "failed", exit_code: exitCode });
};
