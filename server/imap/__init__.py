"""imap"""
