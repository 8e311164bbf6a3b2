from numdiff_component.cli.main import main

main()
