"""Reports: tables, plots and dashboards built from what trials and sweeps record."""
