"""remem's terminal UI (Textual). Start it with `remem tui`."""


def run() -> None:
    from remem.tui.app import RememApp

    RememApp().run()
