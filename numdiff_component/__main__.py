from numdiff_component.cli import main

main()
