from evspec.cli import main

raise SystemExit(main())
