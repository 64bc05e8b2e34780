from clnn.cli.main import main

raise SystemExit(main())
