"""scalerl.train"""
