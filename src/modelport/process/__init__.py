"""Process start-up in one room: the `modelport` command (`cli/`), the one-off start-up work (`bootstrap`,
`launch`), a serving process (`server`, `serving`), the supervisor of N of them (`supervisor`) and a task
worker process (`worker`).

Kept empty: `python -m modelport.process.supervisor` imports this package and must stay lean."""
