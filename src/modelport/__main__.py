import gc

# The start-up imports' objects live as long as the process: no collection while importing them (~20 % of the
# import time). `cli.main` turns the collector on again; `serve` keeps it off until its apps are built.
gc.disable()

from modelport.process.cli import main  # noqa: E402

main()
