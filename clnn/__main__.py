from clnn.cli import main

raise SystemExit(main())
