from clnn.tools.cli import main

raise SystemExit(main())
