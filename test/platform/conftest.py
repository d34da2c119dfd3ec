
# --import-mode=importlib does not put test folders on sys.path; the suite's helpers live here.
