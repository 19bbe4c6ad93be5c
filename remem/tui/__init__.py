"""remem's terminal UI (Textual). Start it with `remem tui`."""


def run() -> None:
    """Run the app; when it stopped on an error (Textual printed its traceback), exit with
    the app's non-zero code, so a script or a shell sees that it failed."""
    from remem.tui.app import RememApp

    app = RememApp()
    app.run()
    if app.return_code:
        raise SystemExit(app.return_code)
