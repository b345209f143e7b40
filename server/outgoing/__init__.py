"""outgoing"""
