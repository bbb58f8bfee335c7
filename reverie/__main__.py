from reverie.cli import main

raise SystemExit(main())
