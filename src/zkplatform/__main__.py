from zkplatform.cli import main

raise SystemExit(main())
