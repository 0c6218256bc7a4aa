from evspec.cli.app import main

raise SystemExit(main())
