from alicerce.cli import main

main()
