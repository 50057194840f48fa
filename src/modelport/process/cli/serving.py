"""The serving nouns: `serve` (both hosts), `worker` (task workers only) and `migrate`."""

from __future__ import annotations

import gc
import logging
import sys

import click

from modelport.process.bootstrap import StartupError, prepare, prepare_worker, secure_data_dir, start_sqlite_migration
from modelport.process.cli.banner import StartupFacts, banner_lines, local_model_line
from modelport.process.cli.common import load, run_db
from modelport.process.cli.progress import progress_for


@click.command()
@click.option(
    "--workers", "processes", type=click.IntRange(1, 64), default=1, show_default=True, help="Processes per host."
)
@click.option("--host", default=None, help="Interface to listen on (default 127.0.0.1).")
@click.option("--media-port", type=int, default=None, help="Media host port (default 8080).")
@click.option("--text-port", type=int, default=None, help="Text gateway port (default 8081).")
@click.option(
    "--no-workers",
    "no_workers",
    is_flag=True,
    help="Run no media task workers in this process (leave the work to `modelport worker` processes).",
)
def serve(processes: int, host: str | None, media_port: int | None, text_port: int | None, no_workers: bool) -> None:
    """Run the media host and the text gateway."""
    from modelport.logs import configure_logging
    from modelport.process import launch

    # Start-up imports ~240,000 objects that live as long as the serving processes: collecting while importing
    # them is ~20 % of the import time. serve_both turns the collector on again once they are frozen.
    gc.disable()
    settings = load(host=host, media_port=media_port, text_port=text_port)
    if no_workers:
        settings = settings.model_copy(update={"tasks": settings.tasks.model_copy(update={"run_workers": False})})
    configure_logging(settings.log_level, json_lines=settings.log_json)
    data_dir_warning = secure_data_dir(settings)
    migration = start_sqlite_migration(settings)
    from modelport.process import server

    # Needed anyway (serving in this process, or in processes forked from it); on a first start, imported
    # while the child migrates on the other core.
    server.import_apps()
    if migration is not None:
        try:
            migration.wait()
        except StartupError as exc:
            raise click.ClickException(str(exc)) from exc
    demo = run_db(settings, lambda engine: prepare(engine, settings), migrate_sqlite=False)
    media_sock = launch.bind_socket(settings.host, settings.media_port)
    text_sock = launch.bind_socket(settings.host, settings.text_port)
    # With port 0 the OS picked the ports: the serving processes (and the public media URL default) need the real ones.
    settings = settings.model_copy(
        update={"media_port": media_sock.getsockname()[1], "text_port": text_sock.getsockname()[1]}
    )
    metrics = launch.start_metrics(settings, processes)
    from modelport.operator.people import People

    # While no operator account exists: a setup link for the first one (a new one at each start).
    first_operator = run_db(
        settings, lambda engine: People(engine, settings).first_operator_link(), migrate_sqlite=False
    )
    allowed = sorted(settings.net.allowed_pairs())
    if allowed or settings.net.ca_bundle is not None:
        logging.getLogger("modelport.net").warning(
            "user URL fetcher: allow_hosts=%s ca_bundle=%s", allowed, settings.net.ca_bundle
        )
    facts = StartupFacts(
        processes=processes,
        local_model=local_model_line(settings),
        metrics_url=None if metrics is None else metrics.url,
        data_dir_warning=data_dir_warning,
        demo=demo,
        first_operator_url=first_operator,
    )
    click.echo("\n".join(banner_lines(settings, facts)), err=False)
    sys.stdout.flush()
    launch.raise_open_file_limit()  # inherited across the exec and by every serving process
    if processes > 1:
        launch.serving_environment(settings)
        forked = server.fork_serving(processes, media_sock, text_sock, metrics)
        launch.exec_supervisor(settings, media_sock, text_sock, processes, metrics, forked)  # does not return
    server.serving_main(settings, media_sock, text_sock)


@click.command()
def worker() -> None:
    """Run media tasks, the task reconciler and webhook deliveries (no HTTP); start as many as you like."""
    from modelport.logs import configure_logging
    from modelport.process.worker import run_worker, start_metrics

    settings = load()
    configure_logging(settings.log_level, json_lines=settings.log_json)
    secure_data_dir(settings)
    # The schema (SQLite migrated, PostgreSQL must be up to date) and the catalog, as serve does.
    run_db(settings, lambda engine: prepare_worker(engine, settings), migrate_sqlite=False)
    metrics_url = start_metrics(settings)
    click.echo("media task worker started", err=False)
    if metrics_url is not None:
        click.echo(f"metrics:       {metrics_url}   (Prometheus text format)", err=False)
    sys.stdout.flush()
    import uvloop

    uvloop.run(run_worker(settings))


@click.command()
def migrate() -> None:
    """Bring the database schema up to date.

    On a terminal it shows the migrations applied of those to apply."""
    from modelport.storage.migrate import upgrade_to_head

    settings = load()
    secure_data_dir(settings)
    with progress_for("migrating", "migrations") as progress:
        run_db(settings, lambda engine: upgrade_to_head(engine, progress=progress), migrate_sqlite=False)
    click.echo("schema is up to date")
