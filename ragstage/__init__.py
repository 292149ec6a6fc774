"""ragstage"""
