from imap_mcp.server.cli import main

main()
