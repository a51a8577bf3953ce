"""Playing GitHub against a running emulator from the shell: ``orchestrator sim issue | label |
review | check | push | pr | protect | merge | comment | state``.

`session` talks to the emulator (its GitHub REST API as a person, its control
API for what only CI or the emulator itself can do), `actions` holds the
commands that change something, `views` the ones that show the state.
"""
