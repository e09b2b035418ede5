from dualpath_plan.cli import main

raise SystemExit(main())
