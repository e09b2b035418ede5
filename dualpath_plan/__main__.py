from dualpath_plan.console import main

raise SystemExit(main())
