"""Config schemas (`schema`: RunSpec and every group), the early check of a command line (`precheck`), the experiments search path and secrets in configs."""
